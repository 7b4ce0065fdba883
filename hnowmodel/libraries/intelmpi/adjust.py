"""Intel MPI's tuning strings: the ``I_MPI_ADJUST_<OP>`` values that pin an algorithm per message-size and
process-count range, written and read as Intel MPI's developer reference ("I_MPI_ADJUST Family") says they are
read: rules separated by ``;``, each ``<algorithm>[:<conditions>]``, a condition ``<m1>-<m2>`` (message sizes,
bytes, both included) optionally followed by ``@<p1>-<p2>`` (process counts, both included); the first rule whose
conditions hold is used, and where none does the library chooses as it would without the variable (its tuning
file). Intel MPI 2021.16 was seen running the last rule's algorithm where none holds (docs/intel-mpi.md, "Export"):
not modelled here. An algorithm's number is its ``leaf`` (:mod:`.algorithms`); :mod:`.export` writes the strings.

>>> rules = parse_adjust("1:0-65536@6-6;8:65537-262144@6-6")
>>> [adjust_runs(rules, n, m) for n, m in ((6, 4096), (6, 100000), (5, 4096), (6, 1 << 20))]
[1, 8, None, None]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ...errors import InputError

__all__ = ["TUNING_DEFAULT", "AdjustRule", "adjust_variable", "parse_adjust", "adjust_runs", "format_adjust"]

#: The leaf that keeps Intel MPI's own choice (no rule: the tuning file decides).
TUNING_DEFAULT = 0


#: hnow's operations whose MPI call reads a variable not named after the operation: ``reduce_scatter`` is
#: ``MPI_Reduce_scatter_block``, which reads ``I_MPI_ADJUST_REDUCE_SCATTER_BLOCK`` (``I_MPI_ADJUST_REDUCE_SCATTER``
#: is ``MPI_Reduce_scatter``'s; checked on the wire: docs/intel-mpi.md).
_CALL_NAMES = {"reduce_scatter": "reduce_scatter_block"}


def adjust_variable(op: str) -> str:
    """The variable that pins ``op``'s algorithm (read in ``MPI_Init``).

    >>> adjust_variable("scatter"), adjust_variable("reduce_scatter")
    ('I_MPI_ADJUST_SCATTER', 'I_MPI_ADJUST_REDUCE_SCATTER_BLOCK')
    """
    return f"I_MPI_ADJUST_{_CALL_NAMES.get(op, op).upper()}"


@dataclass(frozen=True)
class AdjustRule:
    """One rule of an ``I_MPI_ADJUST_<OP>`` string: ``algorithm`` for message sizes ``lo..hi`` bytes and process
    counts ``plo..phi`` (both ends included; None: any)."""

    algorithm: int
    lo: int | None = None
    hi: int | None = None
    plo: int | None = None
    phi: int | None = None

    def holds(self, n: int, size: int) -> bool:
        """Whether the rule applies on ``n`` processes at ``size`` bytes."""
        size_ok = self.lo is None or self.lo <= size <= (self.hi if self.hi is not None else self.lo)
        procs_ok = self.plo is None or self.plo <= n <= (self.phi if self.phi is not None else self.plo)
        return size_ok and procs_ok

    def text(self) -> str:
        out = str(self.algorithm)
        if self.lo is not None:
            out += f":{self.lo}" + (f"-{self.hi}" if self.hi is not None else "")
            if self.plo is not None:
                out += f"@{self.plo}" + (f"-{self.phi}" if self.phi is not None else "")
        return out


_RULE = re.compile(r"^(\d+)(?::(\d+)(?:-(\d+))?(?:@(\d+)(?:-(\d+))?)?)?$")


def parse_adjust(text: str, name: str = "I_MPI_ADJUST") -> tuple[AdjustRule, ...]:
    """The rules of an ``I_MPI_ADJUST_<OP>`` value; :class:`InputError` naming the rule that is not
    ``ALG[:M1[-M2][@P1[-P2]]]`` with whole decimal numbers and increasing ranges.

    >>> parse_adjust("1")[0].holds(64, 10**9)
    True
    >>> parse_adjust("1:10-5")
    Traceback (most recent call last):
    ...
    hnowmodel.errors.InputError: I_MPI_ADJUST rule '1:10-5': the range 10-5 does not increase
    """
    rules = []
    for part in (p.strip() for p in text.strip().split(";")):
        if not part:
            continue
        m = _RULE.match(part)
        if not m:
            raise InputError(f"{name} rule {part!r}: expected ALG[:M1[-M2][@P1[-P2]]] (whole decimal numbers)")
        alg, lo, hi, plo, phi = (int(g) if g is not None else None for g in m.groups())
        for a, b in ((lo, hi), (plo, phi)):
            if a is not None and b is not None and b < a:
                raise InputError(f"{name} rule {part!r}: the range {a}-{b} does not increase")
        if alg < 1:
            raise InputError(f"{name} rule {part!r}: algorithm numbers start at 1")
        rules.append(AdjustRule(alg, lo, hi, plo, phi))
    return tuple(rules)


def adjust_runs(rules: Sequence[AdjustRule], n: int, size: int) -> int | None:
    """The algorithm ``rules`` run on ``n`` processes at ``size`` bytes per rank (the first rule that holds), None
    where none does (Intel MPI's own choice)."""
    return next((r.algorithm for r in rules if r.holds(n, size)), None)


def format_adjust(rules: Sequence[AdjustRule]) -> str:
    """The ``I_MPI_ADJUST_<OP>`` value of ``rules``.

    >>> format_adjust([AdjustRule(1, 0, 65536, 6, 6)])
    '1:0-65536@6-6'
    """
    return ";".join(r.text() for r in rules)
