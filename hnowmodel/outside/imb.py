"""The Intel MPI Benchmarks' text output (``IMB-MPI1``): one table per benchmark and process count.

A table starts with ``# Benchmarking NAME`` and ``# #processes = N`` and has a header line starting ``#bytes``
(``#bytes #repetitions t[usec] Mbytes/sec`` for PingPong; ``#bytes #repetitions t_min[usec] t_max[usec]
t_avg[usec]`` for the collectives), then one line of numbers per message size. ``t[usec]`` of PingPong is half the
round trip (one way); a collective's headline is ``t_max`` (the slowest rank's average over the repetitions). The
header names the datatypes (``MPI_Datatype``, ``MPI_Datatype for reductions``: MPI_FLOAT unless IMB ran with
``-red_data_type``); each row's ``m_bytes`` is its ``#bytes`` as the registry's ``m`` (:func:`~.rows.registry_m`).

>>> text = '''# Benchmarking PingPong
... # #processes = 2
...        #bytes #repetitions      t[usec]   Mbytes/sec
...             0         1000         0.45         0.00
...          1024         1000         0.80      1280.00
... '''
>>> [(r.op, r.np, r.size, r.t_us) for r in parse_imb(text)[0]]
[('pingpong', 2, 0, 0.45), ('pingpong', 2, 1024, 0.8)]
"""

from __future__ import annotations

import re

from ..errors import InputError
from ..ops import OPERATIONS
from .rows import OPS_OF, OutsideRow, registry_m

__all__ = ["parse_imb"]

_BENCH = re.compile(r"^#\s*Benchmarking\s+(\S+)")
_PROCS = re.compile(r"^#\s*#processes\s*=\s*(\d+)")
_HEADER_KEYS = {
    "Date", "Machine", "MPI Version", "Version", "Release", "System", "MPI_Datatype", "MPI_Datatype for reductions"
}  # fmt: skip
#: IMB's reductions' datatype when its header does not say (its default).
IMB_REDUCTION_DEFAULT = "MPI_FLOAT"


def _column(name: str) -> str:
    """A table column's key: ``t_min[usec]`` -> ``t_min``, ``#repetitions`` -> ``repetitions``."""
    return name.lstrip("#").split("[")[0].lower()


def _datatype(op: str, header: dict[str, str]) -> str:
    """The datatype of ``op``'s buffers as IMB's header says (a reduction's: what it combines)."""
    if op and op != "pingpong" and OPERATIONS[op].reduction:
        return header.get("MPI_Datatype for reductions", IMB_REDUCTION_DEFAULT)
    return header.get("MPI_Datatype", "")


def _row(
    bench: str, np_: int | None, cols: list[str], values: list[str], line_no: int, header: dict[str, str]
) -> OutsideRow:
    try:
        v = dict(zip(cols, (float(x) for x in values), strict=False))
    except ValueError:
        raise InputError(f"IMB line {line_no}: {' '.join(values)!r} is not a row of numbers") from None
    if "bytes" not in v:
        raise InputError(f"IMB line {line_no}: the table has no #bytes column")
    t = v.get("t", v.get("t_max", v.get("t_avg")))
    if t is None:
        raise InputError(f"IMB line {line_no}: the table has no time column (t[usec] or t_max[usec])")
    reps = v.get("repetitions")
    op = OPS_OF.get(bench.lower(), "")
    dtype = _datatype(op, header)
    return OutsideRow(
        "imb",
        bench,
        op,
        np_,
        int(v["bytes"]),
        t,
        v.get("t_min"),
        v.get("t_max"),
        v.get("t_avg"),
        int(reps) if reps is not None else None,
        registry_m("imb", bench.lower(), int(v["bytes"]), np_, dtype),
        dtype,
    )


def parse_imb(text: str) -> tuple[tuple[OutsideRow, ...], dict[str, str]]:
    """Every table row of IMB-MPI1's output ``text``, and what its header says (``Date``, ``Version``, ...);
    :class:`InputError` (with the line) for a table row that is not numbers, or when there is no table at all."""
    rows: list[OutsideRow] = []
    header: dict[str, str] = {}
    bench, np_, cols, read = "", None, [], 0
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if m := _BENCH.match(line):
            bench, np_, cols = m.group(1), None, []
        elif m := _PROCS.match(line):
            np_ = int(m.group(1))
        elif line.startswith("#bytes") and bench:
            cols, read = [_column(w) for w in line.split()], 0
        elif line.startswith("#") or not line:
            if not line and read:  # the blank line after a table's rows ends it
                cols = []
            key, sep, value = line.lstrip("# ").partition(":")
            if sep and key.strip() in _HEADER_KEYS:
                header[key.strip()] = value.strip()
            if "Intel(R) MPI Benchmarks" in line:
                header["suite"] = line.lstrip("# ").strip()
        elif cols:
            rows.append(_row(bench, np_, cols, line.split(), i, header))
            read += 1
    if not rows:
        raise InputError("IMB: no benchmark table found (expected '# Benchmarking NAME' and a '#bytes ...' header)")
    return tuple(rows), header
