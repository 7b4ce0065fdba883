"""Open MPI's coll/tuned rules file (5.0.x text format): write it, read it as Open MPI does, check it, and say what it
selects - and what Open MPI selects without it (its fixed rules).

With ``coll_tuned_use_dynamic_rules 1`` and ``coll_tuned_dynamic_rules_filename PATH``, every process reads ``PATH``
when coll/tuned opens (``ompi_coll_tuned_read_rules_config_file``, ``coll_tuned_dynamic_file.c``). The file is a
stream of whole numbers (``#`` starts a comment that runs to the end of the line)::

    NCOL                                   number of collectives that follow
      COLID                                allgather 0, allreduce 2, alltoall 3, bcast 7, gather 9, reduce 11,
                                           reduce_scatter_block 13, scatter 15 (coll_base_functions.h, COLLTYPE)
      NCOMSIZES                            number of communicator sizes that follow
        COMSIZE NMSGSIZES                  a communicator size and its number of message-size rules
          MSGSIZE ALG FANINOUT SEGSIZE     one rule (the first at MSGSIZE 0); with "rule-file-version-2" as the
                                           file's first bytes (Open MPI >= 5.0.7) a 5th number on the same line,
                                           max_requests, may follow

A communicator of size n uses the last communicator-size entry whose size is <= n (the first entry when every one
is larger); a message uses the last rule whose MSGSIZE is <= its size (``coll_tuned_dynamic_rules.c``). The message
size (``coll_tuned_decision_dynamic.c``, :func:`message_size`) is the bytes of the message or vector for bcast,
reduce and allreduce (count x type size), and **block bytes x communicator size** for scatter, gather, allgather,
alltoall (each computed from the *send* count and type on every rank) and reduce_scatter_block (the result block,
rcount x type size, times the ranks). Algorithm 0 means
"Open MPI's fixed rules" (:func:`default_algorithm`): the dynamic decision falls back to them, so a file can say
"the default" for a range. A file Open MPI cannot read is **ignored without a word** (its messages about it are
compiled into debug builds only), and an algorithm number out of range makes that collective fail with
``MPI_ERR_ARG``. Hence :func:`parse` reads a file as Open MPI does and refuses, with the line, what Open MPI would
refuse; :func:`check` also refuses what Open MPI would read but not as meant (rules out of order, unknown
algorithm numbers, a collective twice).

hnow writes version 1 (four numbers per rule): Open MPI 5.0.0-5.0.6 read no version line and would take
``rule-file-version-2`` for a bad file; ``max_requests`` matters only to alltoall.

>>> r = for_comm_size(4, {"bcast": [(0, (5, 0, 0)), (65537, FIXED)]})
>>> text = format_rules(r)
>>> validate(text) == r
True
>>> select(r, "bcast", 4, 65536).algorithm, select(r, "bcast", 4, 65537).algorithm, select(r, "bcast", 5, 8).algorithm
(5, 0, 0)
>>> runs(r, "bcast", 4, 1 << 20), default_algorithm("bcast", 4, 1 << 20)
((2, 1, 0), 2)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from ...errors import InputError
from . import fixed as _fixed
from . import tuned as _tuned

__all__ = [
    "COLLECTIVE_IDS",
    "COLLECTIVE_COUNT",
    "ALGORITHMS",
    "FIXED",
    "Rule",
    "CommRules",
    "Rules",
    "default_algorithm",
    "message_size",
    "canonical",
    "algorithm_name",
    "for_comm_size",
    "format_rules",
    "parse",
    "check",
    "validate",
    "select",
    "runs",
]

#: The collective IDs of the rules file (``COLLTYPE`` in ``ompi/mca/coll/base/coll_base_functions.h``).
COLLECTIVE_IDS: Mapping[str, int] = MappingProxyType(
    {
        "allgather": 0,
        "allreduce": 2,
        "alltoall": 3,
        "bcast": 7,
        "gather": 9,
        "reduce": 11,
        "reduce_scatter": 13,  # MPI_Reduce_scatter_block: tuned's reduce_scatter_block
        "scatter": 15,
    }
)
#: ``COLLCOUNT``: a file may name at most this many collectives, with IDs below it.
COLLECTIVE_COUNT = 22
_COLL_NAMES = (
    "allgather allgatherv allreduce alltoall alltoallv alltoallw barrier bcast exscan gather gatherv reduce "
    "reduce_scatter reduce_scatter_block scan scatter scatterv neighbor_allgather neighbor_allgatherv "
    "neighbor_alltoall neighbor_alltoallv neighbor_alltoallw"
).split()
#: Each operation's algorithms by number (``coll_tuned_<op>_decision.c``: 0 is "ignore", which in a rules file means
#: Open MPI's fixed rules); a number past the end makes the collective fail.
ALGORITHMS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "bcast": (
            "fixed rules",
            "basic_linear",
            "chain",
            "pipeline",
            "split_binary_tree",
            "binary_tree",
            "binomial",
            "knomial",
            "scatter_allgather",
            "scatter_allgather_ring",
        ),
        "scatter": ("fixed rules", "basic_linear", "binomial", "linear_nb"),
        "gather": ("fixed rules", "basic_linear", "binomial", "linear_sync"),
        **_tuned.ALGORITHM_NAMES,
    }
)
#: The leaf ``(algorithm, faninout, segsize)`` that hands a range back to Open MPI's fixed rules.
FIXED = (0, 0, 0)


def _op(op: str) -> str:
    if op not in COLLECTIVE_IDS:
        raise InputError(f"Open MPI rules: unknown operation {op!r} (choose from: {', '.join(COLLECTIVE_IDS)})")
    return op


#: The operations whose rules-file message size is the call's own count x type size (the message, the vector); every
#: other one's is a block's times the communicator size.
_WHOLE = frozenset({"bcast", "reduce", "allreduce"})


def message_size(op: str, comm_size: int, size_bytes: int) -> int:
    """The message size a rules file is looked up with for ``size_bytes`` (the operation's ``m``: bcast's message,
    reduce's and allreduce's vector, the block of the others): ``size_bytes`` for bcast, reduce and allreduce,
    ``size_bytes x comm_size`` (the block times the ranks) for scatter, gather, allgather, alltoall and
    reduce_scatter_block.

    >>> message_size("bcast", 4, 1024), message_size("gather", 4, 1024), message_size("allreduce", 4, 1024)
    (1024, 4096, 1024)
    >>> message_size("alltoall", 4, 1024), message_size("reduce_scatter", 4, 1024)
    (4096, 4096)
    """
    return int(size_bytes) * (1 if _op(op) in _WHOLE else int(comm_size))


def default_algorithm(op: str, comm_size: int, size_bytes: int) -> int:
    """The algorithm number Open MPI 5.0.x's fixed rules run for ``op`` on ``comm_size`` ranks with ``size_bytes``
    (the operation's ``m``): :func:`.fixed.default_algorithm` for bcast, scatter and gather,
    :func:`.tuned.fixed_algorithm` for the others (MPI_SUM on doubles).

    >>> default_algorithm("bcast", 4, 262144), default_algorithm("allreduce", 2, 1024)
    (1, 3)
    """
    if _op(op) in _fixed.OPS:
        return _fixed.default_algorithm(op, comm_size, size_bytes)
    return _tuned.fixed_algorithm(op, comm_size, size_bytes)


def canonical(op: str, algorithm: int, faninout: int = 0, segsize: int = 0) -> tuple[int, int, int]:
    """``(algorithm, faninout, segsize)`` as what runs (:func:`.fixed.canonical`, :func:`.tuned.canonical`).

    >>> canonical("bcast", 2, 0), canonical("allgather", 4, 3, 1024)
    ((2, 1, 0), (4, 0, 0))
    """
    if _op(op) in _fixed.OPS:
        return _fixed.canonical(op, algorithm, faninout, segsize)
    return _tuned.canonical(op, algorithm, faninout, segsize)


def algorithm_name(op: str, algorithm: int, faninout: int = 0) -> str:
    """A readable name of ``op``'s algorithm ``algorithm`` (``chain`` with its fanout).

    >>> algorithm_name("bcast", 2, 3), algorithm_name("gather", 0), algorithm_name("scatter", 9)
    ('chain:3', 'fixed rules', 'algorithm 9 (invalid)')
    """
    names = ALGORITHMS[_op(op)]
    if not 0 <= algorithm < len(names):
        return f"algorithm {algorithm} (invalid)"
    if op == "bcast" and algorithm == 2:
        return f"chain:{canonical(op, 2, faninout)[1]}"
    return names[algorithm]


@dataclass(frozen=True)
class Rule:
    """One message-size rule: from ``msg_bytes`` (the file's message size) upwards, run ``algorithm`` with
    ``faninout`` and ``segsize`` (bytes; 0: no segmentation); ``max_requests`` when the file gives one."""

    msg_bytes: int
    algorithm: int
    faninout: int = 0
    segsize: int = 0
    max_requests: int | None = None

    @property
    def leaf(self) -> tuple[int, int, int]:
        return (self.algorithm, self.faninout, self.segsize)


@dataclass(frozen=True)
class CommRules:
    """The rules of communicators from ``comm_size`` ranks (up to the next entry's size), by message size."""

    comm_size: int
    rules: tuple[Rule, ...]


@dataclass(frozen=True)
class Rules:
    """A rules file: per collective ID, its communicator-size entries in file order; ``version`` 1 or 2."""

    collectives: Mapping[int, tuple[CommRules, ...]]
    version: int = 1

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Rules)
            and self.version == other.version
            and dict(self.collectives) == dict(other.collectives)
        )

    def __hash__(self) -> int:
        return hash((self.version, tuple(sorted(self.collectives.items()))))


def for_comm_size(comm_size: int, per_op: Mapping[str, Sequence[tuple[int, tuple[int, int, int]]]]) -> Rules:
    """Rules that change only communicators of exactly ``comm_size`` ranks: for each op, ``(from_bytes, leaf)`` in
    increasing ``from_bytes`` (bytes per rank, as :func:`default_algorithm` takes them; converted with
    :func:`message_size`), each leaf ``(algorithm, faninout, segsize)`` applying up to the next one; :data:`FIXED`
    hands a range back to the fixed rules. Below the first ``from_bytes``, and on communicators of other sizes (the
    entries for sizes 0 and ``comm_size + 1`` say so), the fixed rules run. Ops with no leaf other than
    :data:`FIXED` are left out."""
    if isinstance(comm_size, bool) or not isinstance(comm_size, int) or comm_size < 1:
        raise InputError(f"Open MPI rules: communicator size must be a whole number >= 1, got {comm_size!r}")
    out: dict[int, tuple[CommRules, ...]] = {}
    for op in sorted(per_op, key=lambda o: COLLECTIVE_IDS[_op(o)]):
        rules: list[Rule] = [Rule(0, *FIXED)]
        last = -1
        for frm, leaf in per_op[op]:
            if frm <= last:
                raise InputError(f"Open MPI rules: {op} sizes must increase, got {frm} after {last}")
            last = frm
            msg = message_size(op, comm_size, frm)
            if msg == 0:
                rules = []
            if rules and rules[-1].leaf == tuple(leaf):
                continue
            rules.append(Rule(msg, *leaf))
        if all(r.leaf == FIXED for r in rules):
            continue
        fallback = (CommRules(comm_size + 1, (Rule(0, *FIXED),)),)
        below = (CommRules(0, (Rule(0, *FIXED),)),) if comm_size > 0 else ()
        out[COLLECTIVE_IDS[op]] = (*below, CommRules(comm_size, tuple(rules)), *fallback)
    return Rules(MappingProxyType(out))


def _op_of(colid: int) -> str | None:
    return next((op for op, i in COLLECTIVE_IDS.items() if i == colid), None)


def _coll_name(colid: int) -> str:
    return _COLL_NAMES[colid] if 0 <= colid < len(_COLL_NAMES) else f"collective {colid}"


def format_rules(rules: Rules, header: Sequence[str] = ()) -> str:
    """The text of ``rules`` in the format Open MPI reads (version 1 unless ``rules.version`` is 2), one number
    group per line with a ``#`` comment saying what it is; ``header`` lines go first, as comments."""
    lines = [f"# {h}" if h else "#" for h in header]
    if rules.version > 1:
        lines.insert(0, f"rule-file-version-{rules.version}")
    lines.append(f"{len(rules.collectives):<24}# collectives in this file")
    for colid, entries in rules.collectives.items():
        op = _op_of(colid)
        lines.append(f"{colid:<24}# collective id: {_coll_name(colid)}")
        lines.append(f"{len(entries):<24}# communicator sizes")
        for k, cr in enumerate(entries):
            nxt = entries[k + 1].comm_size - 1 if k + 1 < len(entries) else None
            upto = " and up" if nxt is None else "" if nxt == cr.comm_size else f" to {nxt}"
            lines.append(f"{cr.comm_size:<24}# communicator size {cr.comm_size}{upto}")
            lines.append(f"{len(cr.rules):<24}# message sizes")
            for r in cr.rules:
                nums = f"{r.msg_bytes} {r.algorithm} {r.faninout} {r.segsize}"
                if r.max_requests is not None:
                    nums += f" {r.max_requests}"
                what = algorithm_name(op, r.algorithm, r.faninout) if op else f"algorithm {r.algorithm}"
                n = cr.comm_size
                split = op is not None and op not in _WHOLE and n and r.msg_bytes and not r.msg_bytes % n
                unit = f" B ({r.msg_bytes // n} B x {n})" if split else " B"
                lines.append(f"{nums:<24}# from {r.msg_bytes}{unit}: {what}")
    return "\n".join(lines) + "\n"


# ---- reading, as coll_tuned_dynamic_file.c does -----------------------------------------------------------------
_NUMBER = re.compile(r"-?[0-9]+")


class _Scanner:
    """The file's numbers as ``ompi_coll_base_file_getnext_long`` returns them, with their line numbers. Stricter
    than Open MPI where Open MPI would read something else than it looks like: only plain decimal numbers
    (``%li`` reads ``010`` as 8 and ``0x10`` as 16) and ``#`` comments (Open MPI skips any other character on its
    own, reading digits inside words as numbers)."""

    def __init__(self, text: str, pos: int = 0) -> None:
        self.text, self.pos, self.line = text, pos, 1 + text.count("\n", 0, pos)

    def _skip(self) -> None:
        t = self.text
        while self.pos < len(t):
            c = t[self.pos]
            if c == "#":
                end = t.find("\n", self.pos)
                self.pos = len(t) if end < 0 else end
            elif c.isspace():
                self.line += c == "\n"
                self.pos += 1
            else:
                return

    def number(self, what: str) -> int:
        self._skip()
        if self.pos >= len(self.text):
            raise InputError(f"Open MPI rules line {self.line}: the file ends where {what} should be")
        m = _NUMBER.match(self.text, self.pos)
        word = re.match(r"\S+", self.text[self.pos :])
        token = word.group(0) if word else self.text[self.pos]
        if not m or (m.end() < len(self.text) and not (self.text[m.end()].isspace() or self.text[m.end()] == "#")):
            raise InputError(
                f"Open MPI rules line {self.line}: {token!r} where {what} should be (only whole decimal numbers and "
                "'#' comments: Open MPI skips other characters one by one and reads digits inside words as numbers)"
            )
        digits = m.group(0).lstrip("-")
        if len(digits) > 1 and digits.startswith("0"):
            raise InputError(f"Open MPI rules line {self.line}: {token!r}: Open MPI reads a leading 0 as octal")
        self.pos = m.end()
        value = int(m.group(0))
        if value < 0:
            raise InputError(f"Open MPI rules line {self.line}: {what} {value} is negative (Open MPI drops the file)")
        return value

    def digit_on_this_line(self) -> bool:
        """``ompi_coll_base_file_peek_next_char_isdigit``: after spaces and tabs, is the next character a digit?"""
        t = self.text
        while self.pos < len(t) and t[self.pos] in " \t":
            self.pos += 1
        return self.pos < len(t) and t[self.pos].isdigit()

    def rest_has_numbers(self) -> bool:
        self._skip()
        return self.pos < len(self.text)


def parse(text: str) -> Rules:
    """Read a rules file as Open MPI 5.0.x does; :class:`InputError` (with the line) for what Open MPI would refuse
    - and then ignore the whole file without a word - or read other than it looks (see :class:`_Scanner`)."""
    version, start = 1, 0
    head = re.match(r"rule-file-version-([0-9]+)", text)
    if head:
        version, start = int(head.group(1)), head.end()
    elif text.startswith("r"):
        raise InputError("Open MPI rules line 1: a version line must read 'rule-file-version-N'")
    s = _Scanner(text, start)
    ncol = s.number("the number of collectives")
    if ncol > COLLECTIVE_COUNT:
        raise InputError(f"Open MPI rules line {s.line}: {ncol} collectives, more than there are ({COLLECTIVE_COUNT})")
    out: dict[int, tuple[CommRules, ...]] = {}
    for _ in range(ncol):
        colid = s.number("a collective id")
        if colid >= COLLECTIVE_COUNT:
            raise InputError(f"Open MPI rules line {s.line}: collective id {colid} is not below {COLLECTIVE_COUNT}")
        if colid in out:
            raise InputError(
                f"Open MPI rules line {s.line}: collective {colid} ({_coll_name(colid)}) a second time (Open MPI keeps "
                "the last)"
            )
        entries = []
        for _ in range(s.number(f"the number of communicator sizes of collective {colid}")):
            comm = s.number("a communicator size")
            rules = []
            for k in range(s.number(f"the number of message sizes of communicator size {comm}")):
                msg = s.number("a message size")
                line = s.line
                alg = s.number("an algorithm number")
                fan = s.number("a faninout")
                seg = s.number("a segment size")
                maxreq = s.number("max_requests") if version > 1 and s.digit_on_this_line() else None
                if k == 0 and msg != 0:
                    raise InputError(
                        f"Open MPI rules line {line}: the first rule of communicator size {comm} is for message size "
                        f"{msg}; it must be for 0 (Open MPI drops the file)"
                    )
                rules.append(Rule(msg, alg, fan, seg, maxreq))
            entries.append(CommRules(comm, tuple(rules)))
        out[colid] = tuple(entries)
    if s.rest_has_numbers():
        raise InputError(
            f"Open MPI rules line {s.line}: text after the last rule (Open MPI stops reading before it: is a count "
            "too small?)"
        )
    return Rules(MappingProxyType(out), version)


def check(rules: Rules) -> None:
    """Refuse what Open MPI would read but not use as written: a collective hnow does not know (one not in
    :data:`COLLECTIVE_IDS`), no communicator sizes or no rules, sizes not strictly increasing (the look-up stops at
    the first larger one), an algorithm number the operation does not have (the collective would fail)."""
    for colid, entries in rules.collectives.items():
        op = _op_of(colid)
        if op is None:
            raise InputError(
                f"Open MPI rules: collective {colid} ({_coll_name(colid)}) is not one hnow checks "
                f"({', '.join(f'{o} {i}' for o, i in COLLECTIVE_IDS.items())})"
            )
        if not entries:
            raise InputError(f"Open MPI rules: {op} has no communicator sizes")
        for prev, cr in zip((None, *entries), entries, strict=False):
            if prev is not None and cr.comm_size <= prev.comm_size:
                raise InputError(
                    f"Open MPI rules: {op} communicator size {cr.comm_size} after {prev.comm_size} (sizes must "
                    "increase: Open MPI's look-up stops at the first larger one)"
                )
            if not cr.rules:
                raise InputError(f"Open MPI rules: {op} communicator size {cr.comm_size} has no rules")
            for a, b in zip(cr.rules, cr.rules[1:], strict=False):
                if b.msg_bytes <= a.msg_bytes:
                    raise InputError(
                        f"Open MPI rules: {op} communicator size {cr.comm_size}: message size {b.msg_bytes} after "
                        f"{a.msg_bytes} (sizes must increase)"
                    )
            for r in cr.rules:
                if r.algorithm >= len(ALGORITHMS[op]):
                    raise InputError(
                        f"Open MPI rules: {op} communicator size {cr.comm_size}, message size {r.msg_bytes}: "
                        f"algorithm {r.algorithm} does not exist (0..{len(ALGORITHMS[op]) - 1}; the {op} would fail)"
                    )


def validate(text: str) -> Rules:
    """:func:`parse` then :func:`check`: the rules ``text`` holds, or :class:`InputError` saying what is wrong."""
    rules = parse(text)
    check(rules)
    return rules


def select(rules: Rules, op: str, comm_size: int, size_bytes: int) -> Rule | None:
    """The rule Open MPI takes from ``rules`` for ``op`` on ``comm_size`` ranks with ``size_bytes`` per rank (the
    look-ups of ``coll_tuned_dynamic_rules.c``); None when the file has no rules for ``op`` (the fixed rules run).
    A rule with algorithm 0 also hands the call to the fixed rules."""
    entries = rules.collectives.get(COLLECTIVE_IDS[_op(op)])
    if not entries:
        return None
    best = entries[0]
    for cr in entries:
        if cr.comm_size > comm_size:
            break
        best = cr
    if not best.rules:
        return None
    msg = message_size(op, comm_size, size_bytes)
    found = best.rules[0]
    for r in best.rules:
        if r.msg_bytes > msg:
            break
        found = r
    return found


def runs(rules: Rules | None, op: str, comm_size: int, size_bytes: int) -> tuple[int, int, int]:
    """What Open MPI runs for ``op`` on ``comm_size`` ranks with ``size_bytes`` per rank under ``rules`` (None: no
    file), as :func:`canonical` ``(algorithm, faninout, segsize)``: the file's rule, else the fixed rules'
    choice."""
    r = select(rules, op, comm_size, size_bytes) if rules is not None else None
    if r is None or r.algorithm == 0:
        return canonical(op, default_algorithm(op, comm_size, size_bytes))
    return canonical(op, r.algorithm, r.faninout, r.segsize)
