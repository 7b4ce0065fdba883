"""The comma-list options that the ``hnow`` commands and the MPI tasks both accept, parsed and checked once.

Operations (``bcast,scatter``), tree specs (names in :data:`hnowmodel.trees.TREES`, or ``native`` for the MPI
library's own collective), timing methods, and ``KEY=VALUE`` lists (``--pool fast=16,slow=32``). Errors are
:class:`~hnowmodel.errors.InputError` naming the bad item.

>>> check_ops("bcast, gather")
['bcast', 'gather']
>>> parse_assignments("fast=16,slow=32", "--pool", int, "TYPE=COUNT")
{'fast': 16, 'slow': 32}
>>> parse_variants("paper", ["bcast", "scatter"]), parse_variants("gather=paper")
({'bcast': 'paper', 'scatter': 'paper'}, {'gather': 'paper'})
>>> parse_reduce_rate("0.0004"), parse_reduce_rate("fast=0.0004,slow=0.001"), parse_reduce_rate(None)
(0.0004, {'fast': 0.0004, 'slow': 0.001}, None)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .errors import InputError, TreeError
from .ops import NATIVE, check_native, check_variant, native_name
from .ops import get as _get_op
from .ops import names as _op_names
from .schedules.catalog import ELEM_BYTES
from .treespec import parse_spec, spec_list

__all__ = [
    "split_list",
    "MEASURE_OPS",
    "NATIVE",
    "NATIVE_ON_TESTBED",
    "TIMING_METHODS",
    "check_ops",
    "check_op_sizes",
    "check_trees",
    "check_methods",
    "parse_assignments",
    "parse_variants",
    "VARIANT_FORM",
    "parse_reduce_rate",
    "REDUCE_RATE_FORM",
]

MEASURE_OPS = _op_names()
#: ``fig2``: the paper's Figure 2 (barrier-subtracted loop); ``sync``: synchronised clocks, no barrier.
TIMING_METHODS = ("fig2", "sync")
NATIVE_ON_TESTBED = (
    "--tree native cannot run on the emulated testbed: the MPI library does its own sends, which the emulation "
    "cannot slow down (use --tree binomial, MPICH's binomial tree, over the emulated transport)"
)


def split_list(text: Any) -> list[str]:
    """``"a, b,,c"`` (or a sequence of such strings) -> ``["a", "b", "c"]``.

    >>> split_list(["bcast", "scatter,gather"])
    ['bcast', 'scatter', 'gather']
    """
    items = [text] if text is None or isinstance(text, str) else list(text)
    return [t.strip() for item in items for t in str(item or "").split(",") if t.strip()]


def _check_each(text: Any, flag: str, choices: tuple[str, ...], what: str) -> list[str]:
    items = split_list(text)
    if not items:
        raise InputError(f"{flag}: give at least one of {', '.join(choices)}")
    for item in items:
        if item not in choices:
            raise InputError(f"unknown {what} ({flag}) {item!r} (choose from: {', '.join(choices)})")
    return items


def check_ops(text: Any, flag: str = "--op") -> list[str]:
    """The operations of a comma list (or a sequence of names); :class:`InputError` names an unknown one."""
    return _check_each(text, flag, MEASURE_OPS, "operation")


def check_op_sizes(ops: Any, sizes: Any) -> None:
    """A reduction's sizes are whole numbers of its doubles (MPI_SUM over 8-byte elements, as the executors and
    the C kernel run it); :class:`InputError` names the first that is not.

    >>> check_op_sizes(["allreduce", "bcast"], [8, 16, 3]) is None
    Traceback (most recent call last):
    ...
    hnowmodel.errors.InputError: --sizes: allreduce sums doubles (8 bytes each): 3 B is not a whole number of them
    >>> check_op_sizes(["bcast"], [3]) is None
    True
    """
    for op in ops:
        if not _get_op(op).reduction:
            continue
        odd = [m for m in sizes if int(m) % ELEM_BYTES]
        if odd:
            raise InputError(
                f"--sizes: {op} sums doubles ({ELEM_BYTES} bytes each): {odd[0]} B is not a whole number of them"
            )


def check_methods(text: Any, flag: str = "--methods") -> list[str]:
    """The timing methods of a comma list."""
    return _check_each(text, flag, TIMING_METHODS, "timing method")


def check_trees(text: Any, testbed: Any = None, flag: str = "--tree") -> list[str]:
    """Tree specs of a comma list (registered names, ``kary:4``-style arguments, ``native`` or ``native:ALGO``).

    ``native`` (and ``native:ALGO``) is refused on an emulated testbed (``testbed`` set): the library's own sends
    are not emulated.
    """
    specs = spec_list(text, flag)
    for s in specs:
        if native_name(s) is not None:
            check_native(s, flag=flag)
            continue
        try:
            parse_spec(s)
        except TreeError as e:
            raise InputError(f"{flag}: {e}") from None
    if any(native_name(s) is not None for s in specs) and testbed:
        raise InputError(NATIVE_ON_TESTBED)
    return specs


def parse_assignments(text: Any, flag: str, cast: Callable[[str], Any], form: str) -> dict[str, Any]:
    """``KEY=VALUE`` items of a comma list, values converted by ``cast``; ``form`` shows the expected shape."""
    out: dict[str, Any] = {}
    for item in str(text or "").split(","):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise InputError(f"{flag} item {item!r}: expected {form}")
        try:
            out[key.strip()] = cast(value)
        except ValueError:
            raise InputError(f"{flag} item {item!r}: expected {form}") from None
    return out


#: The forms ``--variant`` takes in every command.
VARIANT_FORM = "NAME or OP=NAME[,OP=NAME]"


def parse_variants(given: Any, ops: Sequence[str] = (), flag: str = "--variant") -> dict[str, str]:
    """The model variant of each operation, from what a user gives in any command: ``NAME`` (the variant of every
    operation of ``ops``), ``OP=NAME[,OP=NAME]`` (per operation; operations not in ``ops`` are checked, then kept
    as given), a mapping ``{op: name}``, or None/``""`` (nothing: each operation's default). Every pair is checked
    against the registries (:func:`hnowmodel.ops.check_variant`); :class:`InputError` names ``flag`` and the form."""
    if given is None or given == "":
        return {}
    if isinstance(given, Mapping):
        got = {str(k): v for k, v in given.items()}
    elif not isinstance(given, str):
        raise InputError(f"{flag}: expected {VARIANT_FORM}, got {given!r}")
    elif "=" not in given:
        name = given.strip()
        if not name or "," in name:
            raise InputError(f"{flag} {given!r}: expected {VARIANT_FORM}")
        got = {op: name for op in ops}
    else:
        got = parse_assignments(given, flag, str.strip, VARIANT_FORM)
    for op, name in got.items():
        if not isinstance(name, str) or not name:
            raise InputError(f"{flag} {op}={name!r}: expected {VARIANT_FORM}")
        check_variant(op, name)
    return got


#: The form ``--reduce-us-per-byte`` takes.
REDUCE_RATE_FORM = "µs per byte reduced, or TYPE=µs[,TYPE=µs]"


def parse_reduce_rate(given: Any, flag: str = "--reduce-us-per-byte") -> float | dict[str, float] | None:
    """The reduction cost γ a user states (µs per byte combined): one number for every rank, ``TYPE=µs[,…]`` per
    node type, or None/``""`` (none stated: the profile's measured one); :class:`InputError` names ``flag``."""
    if given is None or given == "" or isinstance(given, (int, float, Mapping)):
        return None if given in (None, "") else given
    if "=" in str(given):
        return parse_assignments(given, flag, float, REDUCE_RATE_FORM)
    try:
        return float(given)
    except ValueError:
        raise InputError(f"{flag} {given!r}: expected {REDUCE_RATE_FORM}") from None
